"""Data package: pinned spec releases, target profiles, the bundled CDNA3 subset (shipped as jitgemm.specs)."""

"""Target profiles (YAML), shipped as jitgemm.specs.targets."""

"""Target profiles (YAML), shipped as isa.specs.targets."""

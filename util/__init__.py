"""General utilities every layer may import (bounded, atomic, sealed files; terminal progress). Imports nothing
else of the project."""

"""Field types, one module each, found by the registry (which no type imports): a type is one file."""

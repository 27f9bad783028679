"""Field types, one module each, found by `evalrun.values.registry`. A type module imports only `_base`
and the readers of `evalrun.values` (never the registry), so adding a type is adding one file."""

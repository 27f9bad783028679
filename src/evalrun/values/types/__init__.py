"""Field types, one module each (amount.py, date.py, ...), found by `evalrun.values.registry`.

A type module imports only `_base` and the readers of `evalrun.values` (never this
package or the registry), so adding a type is adding one file here.
"""

"""evalrun's version: recorded in every manifest, so it lives at the bottom where every stage may read it."""

__version__ = "0.1.0"

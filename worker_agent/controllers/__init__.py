"""Level-based controllers: each reconciles one object key from the current cached state."""

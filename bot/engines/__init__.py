"""CI engines: one module per engine (Buildkite, GitHub Actions), each registering itself
behind the interface in base.py. Adding an engine is adding a module here."""

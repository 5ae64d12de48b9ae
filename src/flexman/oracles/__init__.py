"""Independent oracles for the tests and the validation: slow, small arms only. Production code
never imports this package."""

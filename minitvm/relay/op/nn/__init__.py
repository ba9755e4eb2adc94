"""relay.nn ops placeholder: being written."""

"""Op family placeholder: being written."""

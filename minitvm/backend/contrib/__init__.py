"""External code generators (BYOC back ends) shared by the dialects."""

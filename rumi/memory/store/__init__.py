"""Every SQL statement of memory behind public functions: the seam a second backend needs."""

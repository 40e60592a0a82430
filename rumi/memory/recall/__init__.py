"""Finding what matters for a query: parsing, relative time, scoring, fusion, selection."""

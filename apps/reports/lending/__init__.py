"""Lendable off-peak capacity of inference pools: the arithmetic and its query
(``capacity``), and the cached figures the pages and the API read (``selectors``)."""

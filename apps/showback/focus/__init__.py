"""The cost of a range as a FOCUS dataset (the FinOps Foundation's FinOps Open Cost and
Usage Specification): ``rows`` builds one row per pool, charge period and allocation from
the cost engine and the closed months, ``exports`` writes them as FOCUS columns."""

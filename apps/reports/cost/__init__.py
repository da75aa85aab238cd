"""The cost report, from the rollups to the rows a page shows.

The pipeline, each step a module: the hours a pool is in service (``service``) and the
prices in force in them (``prices``) price the sums of its measured hours
(``pool_usage``); with its workloads' requests, interruptions and effective training
hours (``workloads``) they make each pool's figures, which the rows sum by pool, purpose
(``rows``, ``report``) or workload (``split``). Closed months are served as they were
frozen (``periods``); ``explain`` says how each figure was computed, in the numbers of
``formatting``; ``costmodel`` holds the formulas (framework-free). ``daily`` gives the
cost per UTC day for the charts.
"""

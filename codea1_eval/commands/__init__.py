"""The evaluation commands, one module each: a run's config and the function that wires library calls
into its resumable stages (`avg`, `mul`, `bon`). `train` is its own package (`codea1_eval.train`)."""

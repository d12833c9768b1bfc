"""Many pairs and long fuzz campaigns: worker processes on one machine or a Dask cluster.

`pairs` finds the pairs of a batch (a directory or a manifest), `records` verifies one pair
into a plain record and renders the records, `engine` runs chunks of any work in local
worker processes or on Dask distributed and streams the results back in a fixed order, and
`run` verifies a batch (`verilocc verify DIR`) and hands any work to the engine in chunks
(the fuzz command brings its own chunk function, `verilocc.fuzz.chunks.fuzz_chunk`).
"""

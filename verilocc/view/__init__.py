"""Views of an allocation: `verilocc show` and `verilocc verify --format html`.

Data flow: the allocated program (and its virtual program) -> `occupancy` (which value each
physical register holds at each instruction, the live counts) -> `resources` (registers,
spills, occupancy and what limits it) -> `marks` (the report's findings placed on the grid)
-> `model` (a view: one or two allocations) -> `page` (one self-contained HTML page) or
`figure` (a PNG with matplotlib). `show` runs it for a file, `commands` is `verilocc show`.
"""

"""`mkq bench scheduler`: Kueue's scheduler-performance scenarios, run on mkq.

Same input (Kueue's generator and rangespec files), same metrics (Kueue's recorder), so the
figures sit beside Kueue's published ones, and beside a floor no scheduler can beat.

- `generator`, `rangespec`: the two file formats, read with errors naming file and field;
- `scenario`: the Kueue objects, the creation schedule and the TAS nodes, as plain data;
- `simulation` + `engine_port`: engine mode, a discrete-event run on a simulated clock;
- `cluster`: cluster mode, kubesim + the agent process + Kueue's runner on the wall clock;
- `metrics`: Kueue's recorder arithmetic; `floor`: the lower bounds;
- `published`: Kueue's published means; `report`: summary.json, table.md, plot.png;
- `run`: one run end to end; `results`: several runs into RESULTS.md.
"""

"""`arrivalbench human`: a person works through the model arm's repair loop in a local web page.

`desk.py` holds the Model that waits for the person (`HumanModel`) and the state the loop and the
page share; `study.py` the run directory of a study (participants as samples, seconds per task)
and the driver that runs `agent.loop.repair_loop` per task; `server.py` the page's web server;
`static/` the page itself (package data, no CDN). docs/human.md says how to run a study.
"""

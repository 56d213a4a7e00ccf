"""GitHub at the edge: the App's client (app.py), the sticky comment and check run
(publish.py), annotations and pull-request summaries."""

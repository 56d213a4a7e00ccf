"""The worker: the queue loop (loop.py), the handlers it hands each job to (handlers/), and
the GPU-job steps those handlers take over the CI engines (ci/)."""

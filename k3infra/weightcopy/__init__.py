"""The weight copy: a pinned Hugging Face revision streamed into the weight bucket, sharded, verified, resumable.

``copier`` is the program the sync Job runs (a standalone package: it imports nothing of k3infra, so it ships to
the Job as a ConfigMap); ``requirements/`` holds its pinned, hashed dependencies per bucket scheme; ``delivery`` is
what the Pulumi side needs to ship both.
"""

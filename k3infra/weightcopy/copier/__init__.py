"""Copy a pinned Hugging Face revision into a bucket: streamed, sharded over workers, verified, resumable.

The sync Job runs this package as it is (``python -m copier``: each module is a key of one ConfigMap mounted as
the package's directory, ``k3infra.weightcopy.delivery``; it imports nothing of k3infra). One code path for every
cloud: the Hub side is huggingface_hub (files stored on Xet stream through hf_xet's ordered download stream,
its high-throughput backend; other files through ``HfFileSystem``'s streaming reads), the bucket side an
``ObjectStore``: fsspec's s3fs, gcsfs and adlfs for ``s3://``, ``gs://`` and ``az://``, the OSS SDK for
``oss://`` (ossfs writes appendable objects, capped at 5 GB, without metadata).

``sync`` (worker INDEX of N, an Indexed Job's ``JOB_COMPLETION_INDEX``):

1. lists the revision's files with their Hub metadata (size; LFS sha256, or the git blob id of small files);
2. assigns files to workers deterministically, largest first to the least-loaded worker (every worker computes
   the same assignment);
3. skips a file whose object has the expected size and carries the expected hash in its metadata (no reread);
4. streams every other file: a reader thread pulls bytes from the Hub into parts of ``--part-size`` (a bounded
   queue of ``--queue-parts`` parts), the writer uploads each part as it comes (a multipart upload carrying the
   expected hash as metadata) while the next part downloads; ``--streams`` files in flight per worker. The
   bytes are hashed on the way; a size or hash that differs from the Hub's aborts the upload (nothing is
   committed) and fails the file;
5. when every file of every repository is in (whichever worker finishes last sees it), writes the manifest and
   then the completion marker, ``.k3infra/complete-REVISION.json`` under the model directory. The server pods
   wait for that marker (``wait``) before the engine starts.

A rerun after any failure copies only what is missing or wrong. ``verify --deep`` rereads every object and
checks its content hash (for bit rot or out-of-band writes; the normal check trusts the metadata it wrote).
Memory per worker: about ``streams x (queue_parts + 2) x part_size``.

Every command first checks that the pod's identity can reach the bucket (``sync``: write an object; ``wait`` and
``verify``: read). A grant made moments before the pod started may not have propagated yet (Azure role assignments
"up to 10 minutes", Google Cloud IAM "potentially 7 minutes or longer", AWS and Alibaba eventually consistent):
authorization failures (HTTP 401/403 and each SDK's credential errors) are retried with exponential backoff for
``--auth-window`` seconds from the first refusal, then the command fails saying what was refused and why it may be.

Modules, each one job: ``plan`` (what to copy: the Hub's listing, the workers' shares), ``hub`` (the Hub's bytes),
``store`` (what the copy needs of a bucket) with ``fsspec_store`` and ``oss_store`` (the SDKs) and ``stores``
(which for a URI), ``access`` (the authorization check at start), ``hashing``, ``transfer`` (one file, streamed and
verified), ``verification`` (is an object complete, ``verify``), ``marker`` (manifest and completion marker),
``progress`` (each worker's progress object, which ``k3infra status`` reads), ``sync`` (a worker), ``node`` (the
weights kept on a GPU node and a server's choice between them and the bucket), ``caches`` (the engine's caches
through the bucket), ``agent`` (the node agent that keeps both), ``cli`` (the commands), ``__main__`` (``python -m``).

On a GPU node (issue 40): ``node-agent`` keeps a verified copy of the complete revision in the node's directory on
its local NVMe and carries the engine's compile caches through the bucket (restored into an empty cache directory,
saved once a server on the node has served); ``wait --node-dir`` makes a starting server pod choose the node copy
when its marker equals the bucket's, else the bucket. A copy or cache that does not match is ignored, never fatal.
"""

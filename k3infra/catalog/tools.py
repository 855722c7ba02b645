"""The container images of the copy tools that read S3-compatible stores, pinned."""

AWS_CLI_IMAGE = "public.ecr.aws/aws-cli/aws-cli:2.32.9"
"""Image of the S3 copy tools (the AWS CLI v2, pinned; amd64 and arm64). It reads ``AWS_ENDPOINT_URL`` for an
S3-compatible store (AWS CLI v2.13+, docs.aws.amazon.com/sdkref/latest/guide/feature-ss-endpoints.html)."""

S3_SYNC_COMMAND = ('aws configure set default.s3.preferred_transfer_client crt && '
                   'aws s3 sync "$SOURCE" "$DEST" --no-progress --only-show-errors')
"""``aws s3 sync`` with the CRT transfer client (parallel multipart transfers): the bucket-copy loader's copy to
local disk."""

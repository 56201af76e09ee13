"""An S3 server for the store's tests: moto's, in this process (its own thread, a free port)."""

import pytest


@pytest.fixture(scope="session")
def s3_server():
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3_env(s3_server, monkeypatch):
    """The standard AWS environment pointing at the moto server, and a fresh bucket `bench`."""
    import uuid

    import boto3

    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
                 "AWS_ENDPOINT_URL_S3": s3_server, "AWS_ENDPOINT_URL": s3_server}.items():
        monkeypatch.setenv(k, v)
    bucket = f"bench-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", endpoint_url=s3_server).create_bucket(Bucket=bucket)
    import fsspec

    fsspec.filesystem("s3").invalidate_cache()  # a cached instance may have listed another bucket
    return bucket

"""`python -m tests.integration.moto_server --port P`: moto's server, with SageMaker's
instance-type list widened to our catalog (as the in-process fixture does)."""

import argparse

from tests.integration.sagemaker_fixtures import widened_instance_types

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    a = p.parse_args()
    from moto.server import main

    with widened_instance_types():
        main(["-H", "127.0.0.1", "-p", str(a.port)])

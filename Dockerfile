# The image the compose stack runs: the official Airflow image plus this project's lock and library.
# Where Docker Hub cannot be reached, scripts/compose_test.sh builds a Debian stand-in with the
# base image's name first (deploy/standins/airflow; docs/operations.md).
FROM apache/airflow:3.3.2-python3.11
COPY --chown=airflow:root requirements.txt pyproject.toml /opt/llmbench/
COPY --chown=airflow:root include /opt/llmbench/include
# A CA bundle for pip behind a TLS-inspecting proxy comes in as the build secret `pip_ca`
# (`docker buildx build --secret id=pip_ca,src=$PIP_CERT .`): read during this step, in no layer.
RUN --mount=type=secret,id=pip_ca,uid=50000 \
    if [ -s /run/secrets/pip_ca ]; then export PIP_CERT=/run/secrets/pip_ca; fi \
 && pip install --no-cache-dir -r /opt/llmbench/requirements.txt \
 && pip install --no-cache-dir --no-deps -e /opt/llmbench

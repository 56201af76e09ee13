# The image the compose stack runs (and the Helm chart can: no bind mount needed): the official
# Airflow image plus this project's lock and library (a wheel),
# its DAGs and plugin, and the local engine (llama-server and its model, staged into build/engine
# by `make compose-test` from the host's cache: scripts/compose_test.sh). Code and engine are baked
# in: the workers share no writable volume (docs/deploy.md).
# Where Docker Hub cannot be reached, scripts/compose_test.sh builds a Debian stand-in with the
# base image's name first (deploy/standins/airflow; docs/operations.md).
FROM apache/airflow:3.3.2-python3.11
# llama-server's one library beyond the C++ runtime: GNU OpenMP
USER root
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libgomp1 >/dev/null \
 && rm -rf /var/lib/apt/lists/*
USER airflow
COPY --chown=airflow:root requirements.txt pyproject.toml /opt/llmbench/
# A CA bundle for pip behind a TLS-inspecting proxy comes in as the build secret `pip_ca`
# (`docker buildx build --secret id=pip_ca,src=$PIP_CERT .`): read during this step, in no layer.
# The lock first, the library after: an edit of the library rebuilds in seconds, not minutes.
RUN --mount=type=secret,id=pip_ca,uid=50000 \
    if [ -s /run/secrets/pip_ca ]; then export PIP_CERT=/run/secrets/pip_ca; fi \
 && pip install --no-cache-dir -r /opt/llmbench/requirements.txt
# moto's S3 server, the compose stack's stand-in for a bucket (service s3): only where it is asked
# for (docker-compose.yaml, make compose-test), at the dev lock's version; a production image has
# no test tool in it.
ARG WITH_S3_STANDIN=false
COPY --chown=airflow:root requirements-dev.txt /opt/llmbench/
RUN --mount=type=secret,id=pip_ca,uid=50000 \
    if [ "$WITH_S3_STANDIN" != true ]; then exit 0; fi \
 && if [ -s /run/secrets/pip_ca ]; then export PIP_CERT=/run/secrets/pip_ca; fi \
 && pip install --no-cache-dir -c /opt/llmbench/requirements-dev.txt "moto[server]"
# The library as a wheel (built from the source here, installed, the source removed): its data
# (catalog, migrations, shipped configs) is read from site-packages, as on any worker.
COPY --chown=airflow:root include /opt/llmbench/include
RUN --mount=type=secret,id=pip_ca,uid=50000 \
    if [ -s /run/secrets/pip_ca ]; then export PIP_CERT=/run/secrets/pip_ca; fi \
 && pip install --no-cache-dir --no-deps /opt/llmbench \
 && rm -rf /opt/llmbench/include
COPY --chown=airflow:root dags /opt/airflow/dags
COPY --chown=airflow:root plugins /opt/airflow/plugins
COPY --chown=airflow:root build/engine /opt/llmbench-engine
ENV LLMBENCH_LLAMA_SERVER=/opt/llmbench-engine/llama-server \
    LLMBENCH_LOCAL_MODEL=/opt/llmbench-engine/model.gguf

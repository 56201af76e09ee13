# The image the compose stack runs: the official Airflow image plus this project's lock and library.
FROM apache/airflow:3.3.2-python3.11
COPY --chown=airflow:root requirements.txt pyproject.toml /opt/llmbench/
COPY --chown=airflow:root include /opt/llmbench/include
RUN pip install --no-cache-dir -r /opt/llmbench/requirements.txt \
 && pip install --no-cache-dir --no-deps -e /opt/llmbench

#!/bin/bash
# The official image's rule, as the compose file relies on it: `command: scheduler` runs
# `airflow scheduler`; bash and python run as given.
case "${1:-}" in
  bash | python | python3 | sh) exec "$@" ;;
  "") exec airflow --help ;;
  *) exec airflow "$@" ;;
esac

#!/bin/bash
# The official image's rule, as the compose file relies on it: `command: scheduler` runs
# `airflow scheduler`; bash and python run as given. Run as a uid the image does not know
# (AIRFLOW_UID=$(id -u), group 0), it first gives that uid a passwd entry, as the official image
# does: getpass.getuser() and friends need one.
if ! whoami >/dev/null 2>&1 && [ -w /etc/passwd ]; then
  echo "default:x:$(id -u):0:default user:/home/airflow:/sbin/nologin" >>/etc/passwd
fi
case "${1:-}" in
  bash | python | python3 | sh) exec "$@" ;;
  "") exec airflow --help ;;
  *) exec airflow "$@" ;;
esac

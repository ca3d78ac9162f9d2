"""The Flower App's components: fairfl's ServerApp (the configs of the run config ``fairfl-config``) and
ClientApp (``fairfl_core/flower/apps.py``)."""

from fairfl_core.flower.apps import client_app, server_app

server = server_app()
client = client_app()

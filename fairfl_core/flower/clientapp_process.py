"""A long-lived ClientApp process for a SuperNode started with ``--isolation process`` (issue #33).

Flower 1.42's SuperNode runs each message it receives as a task: by default (``--isolation subprocess``) its
``flower-superexec`` starts a new ``flwr-clientapp`` process per task, which imports torch and fairfl and
builds the config's engine before it answers, so a round costs imports, not training. Flower 1.42 has no
ClientApp process that outlives a task (``flwr-clientapp`` takes one task's ``--token`` and exits). With
``--isolation process`` the SuperNode starts nothing and waits for an executor to claim its tasks on its
Runtime API; this module is that executor, started once per SuperNode:

    fairfl flower-clientapp --runtime-api-address 127.0.0.1:<the SuperNode's --port>

It imports Flower, torch and fairfl once, then claims each task (``AcquireTask``, as ``flower-superexec``
does) and runs it in this process with Flower's own steps of ``flwr-clientapp``
(``flwr.supernode.runtime.run_clientapp``: pull the task's message and context, call the ClientApp, push
the reply and the task's status, a heartbeat meanwhile). fairfl's ClientApp is built once, so the node's
engine (`engines.node_engine`, cached per process) is built once per config. It runs only the fairfl app
(``FAB_ID``); a task of another app is answered with an error. The connection is the SuperNode's Runtime API
on loopback, which Flower's own ``flower-superexec`` also uses with ``--insecure``.
"""

from __future__ import annotations

import time
from typing import Any

from fairfl_core.flower.apps import client_app

__all__ = ["FAB_ID", "run_task", "serve"]

FAB_ID = "fairfl/fairfl-flower-app"  # publisher/name of flower/template/pyproject.toml


def _runtime_client(address: str, component: str, token: str | None = None):
    from flwr.supercore.interceptors import RuntimeTokenHttpInterceptor, RuntimeVersionHttpInterceptor
    from flwr.supercore.retry import make_simple_http_retry_invoker
    from flwr.supercore.runtime import RuntimeHttpClient

    interceptors: list[Any] = [RuntimeVersionHttpInterceptor(component_name=component)]
    if token is not None:
        interceptors.append(RuntimeTokenHttpInterceptor(token))
    return RuntimeHttpClient.from_server_address(
        server_address=address,
        insecure=True,
        root_certificates=None,
        interceptors=interceptors,
        retry_invoker=make_simple_http_retry_invoker(),
    )


def run_task(address: str, token: str, app) -> None:
    """Run one task with ``app`` as ``flwr-clientapp --token <token>`` would, in this process."""
    from flwr.app import Message
    from flwr.app.error import Error
    from flwr.common.constant import ErrorCode, SubStatus
    from flwr.supercore.heartbeat import HeartbeatSender, make_task_heartbeat_fn_http
    from flwr.supernode.runtime.run_clientapp import pull_task_input, push_message, push_task_output

    client = _runtime_client(address, "flwr-clientapp", token)
    heartbeat = HeartbeatSender(make_task_heartbeat_fn_http(client))
    heartbeat.start()
    message = context = reply = None
    status, details = SubStatus.FAILED, "ClientApp task failed"
    try:
        message, context, run, _ = pull_task_input(client)
        if run.fab_id != FAB_ID:
            raise ValueError(f"this process runs only the fairfl app {FAB_ID}, not {run.fab_id}")
        reply = app(message=message, context=context)
        status, details = SubStatus.COMPLETED, ""
    except Exception as exc:  # the ServerApp sees the error, as from flwr-clientapp
        details = f"{type(exc).__name__}: {exc}"
        if message is not None:
            reply = Message(
                Error(code=ErrorCode.CLIENT_APP_RAISED_EXCEPTION, reason=details), reply_to=message
            )
    finally:
        if reply is not None and context is not None:
            push_message(client, reply, context)
        push_task_output(client, context, status, details)
        heartbeat.stop()
        client.close()


def serve(address: str, poll: float = 0.02) -> None:
    """Claim and run the ClientApp tasks of the SuperNode whose Runtime API is ``address``, for ever."""
    app = client_app()  # first: the install hint when Flower is missing
    from flwr.proto.runtime_pb2 import AcquireTaskRequest
    from flwr.supercore.constant import TaskType

    control = _runtime_client(address, "SuperExec")
    request = AcquireTaskRequest(supported_task_types=[TaskType.CLIENT_APP])
    while True:
        claimed = control.AcquireTask(request)
        if claimed.HasField("task") and claimed.token:
            run_task(address, claimed.token, app)
        else:
            time.sleep(poll)

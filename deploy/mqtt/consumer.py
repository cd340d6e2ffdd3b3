#!/usr/bin/env python3
"""A ScanGate fleet consumer: every kiosk's reads from the broker, each exactly once.

ScanGate publishes each read at QoS 1 on scangate/<kiosk>/event and keeps it in its spool until the
broker acknowledges it, so a read can arrive twice (after a lost connection or a restart) but is never
lost. Every event carries "kiosk" and an "id" that is unique across restarts: this consumer drops the
repeats by (kiosk, id) and prints one JSON line per read on stdout.

    pip install paho-mqtt==2.2.0
    consumer.py --host mqtt.example.org --port 8883 --cafile ca.crt --cert backend.crt --key backend.key

It keeps a persistent session (client id --id, default "backend"), so reads published while it is
away wait in the broker (bounded by mosquitto's max_queued_messages) and come when it reconnects.
"""
import argparse
import collections
import json
import sys

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties


class RecentIDs:
    """The last `size` ids per kiosk: enough to cover any replay (a kiosk's spool is sent in order)."""

    def __init__(self, size=100_000):
        self.size = size
        self.seen = collections.defaultdict(collections.OrderedDict)

    def first_time(self, kiosk, event_id):
        ids = self.seen[kiosk]
        if event_id in ids:
            return False
        ids[event_id] = None
        if len(ids) > self.size:
            ids.popitem(last=False)
        return True


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, default=1883)
    p.add_argument("--id", default="backend", help="client id (with TLS, the certificate's CN)")
    p.add_argument("--topic", default="scangate/+/event")
    p.add_argument("--cafile")
    p.add_argument("--cert")
    p.add_argument("--key")
    a = p.parse_args()

    recent = RecentIDs()
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=a.id, protocol=mqtt.MQTTv5)
    if a.cafile:
        client.tls_set(ca_certs=a.cafile, certfile=a.cert, keyfile=a.key)

    def on_connect(c, userdata, flags, reason_code, properties):
        if reason_code.is_failure:
            print(f"consumer: the broker refused the connection: {reason_code}", file=sys.stderr, flush=True)
            return
        c.subscribe(a.topic, qos=1)
        print(f"consumer: connected, reading {a.topic}", file=sys.stderr, flush=True)

    def on_message(c, userdata, msg):
        try:
            event = json.loads(msg.payload)
            kiosk, event_id = event["kiosk"], event["id"]
        except (ValueError, KeyError, TypeError):
            print(f"consumer: not a ScanGate event on {msg.topic}", file=sys.stderr, flush=True)
            return
        if recent.first_time(kiosk, event_id):
            print(json.dumps(event, separators=(",", ":"), ensure_ascii=False), flush=True)

    client.on_connect = on_connect
    client.on_message = on_message
    session = Properties(PacketTypes.CONNECT)
    session.SessionExpiryInterval = 7 * 24 * 3600
    client.connect(a.host, a.port, keepalive=30, clean_start=False, properties=session)
    client.loop_forever(retry_first_connection=True)


if __name__ == "__main__":
    main()

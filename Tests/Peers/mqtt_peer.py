#!/usr/bin/env python3
"""An MQTT peer for the ScanGate tests, on paho-mqtt (PyPI, pinned in Tests/python-requirements.txt).

One connection that subscribes and publishes, so a test can act as one client identity (a TLS
certificate whose CN is also the client id) for both. Output, one line each, flushed:
    CONNECTED <reason>
    MSG <topic> <retained 0|1> <payload hex>
    PUBACK <mid> <reason code>
Input, one line each:
    PUB <topic> <payload hex, or - for none> <qos> <retain 0|1>
"""
import argparse
import sys

import paho.mqtt.client as mqtt


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--id", default="")
    p.add_argument("--sub", action="append", default=[])
    p.add_argument("--cafile")
    p.add_argument("--cert")
    p.add_argument("--key")
    a = p.parse_args()

    def say(*words):
        print(*words, flush=True)

    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=a.id, protocol=mqtt.MQTTv5)
    if a.cafile:
        client.tls_set(ca_certs=a.cafile, certfile=a.cert, keyfile=a.key)

    def on_connect(c, userdata, flags, reason_code, properties):
        say("CONNECTED", reason_code.value)
        for topic in a.sub:
            c.subscribe(topic, qos=1)

    def on_message(c, userdata, msg):
        say("MSG", msg.topic, int(msg.retain), msg.payload.hex())

    def on_publish(c, userdata, mid, reason_code, properties):
        say("PUBACK", mid, reason_code.value)

    client.on_connect = on_connect
    client.on_message = on_message
    client.on_publish = on_publish
    client.connect(a.host, a.port, keepalive=30)
    client.loop_start()
    for line in sys.stdin:
        parts = line.split()
        if len(parts) == 5 and parts[0] == "PUB":
            client.publish(parts[1], b"" if parts[2] == "-" else bytes.fromhex(parts[2]), qos=int(parts[3]), retain=parts[4] == "1")
    client.disconnect()
    client.loop_stop()


if __name__ == "__main__":
    main()

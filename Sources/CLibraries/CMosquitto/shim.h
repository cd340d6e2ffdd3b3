// libmosquitto 2.0 (Debian libmosquitto-dev): the MQTT client for the fleet connection.
#include <mosquitto.h>
// MQTT v5 property identifiers and subscribe options (MQTT_PROP_*, MQTT_SUB_OPT_*).
#include <mqtt_protocol.h>

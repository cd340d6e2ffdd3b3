// libmosquitto 2.0 (Debian libmosquitto-dev): the MQTT client for the fleet connection.
#include <mosquitto.h>

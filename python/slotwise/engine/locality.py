"""Locality levels, as YARN's NodeType: a container runs on a host its
request names (node-local), on a rack it names (rack-local), or anywhere
(off-switch)."""

NODE_LOCAL, RACK_LOCAL, OFF_SWITCH = 0, 1, 2
LEVELS = (NODE_LOCAL, RACK_LOCAL, OFF_SWITCH)
LOCALITY_NAMES = ("node_local", "rack_local", "off_switch")
ANY = "*"

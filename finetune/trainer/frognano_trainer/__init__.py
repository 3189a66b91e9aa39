"""frognano's GRPO trainer: a subprocess driven by the Go side over JSON lines.

Entry point: ``python -m frognano_trainer`` (see ``protocol.py``); the protocol is documented
in ../README.md. ``grpo.py`` holds the algorithm's arithmetic, ``model.py`` the model.
"""

# PROTOCOL_VERSION changes whenever a request or response changes shape; the Go client
# refuses a trainer whose version differs (finetune/trainer/protocol.go).
PROTOCOL_VERSION = 1

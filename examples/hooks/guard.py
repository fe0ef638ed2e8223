"""PreToolUse hook: refuse to delete anything under keep/ (exit 2: the reason, on stderr, goes
to the model as the tool's result). Reads the call as Claude Code sends it: tool_name and
tool_input in one JSON object on stdin."""

import json
import sys

call = json.load(sys.stdin)
path = str(call.get("tool_input", {}).get("path", ""))
if call.get("tool_name") == "delete_file" and path.replace("\\", "/").startswith("keep/"):
    print(f"{path} is under keep/, which this project never deletes", file=sys.stderr)
    sys.exit(2)

"""PreCompact hook: copy the transcript about to be summarized to backups/ (it is told where
the transcript is: transcript_path). A manual compaction of a session with 'secret' in it is
cancelled (exit 2: the reason, on stderr, is shown)."""

import json
import shutil
import sys
from pathlib import Path

event = json.load(sys.stdin)
transcript = Path(event["transcript_path"])
Path("backups").mkdir(exist_ok=True)
shutil.copy(transcript, Path("backups") / transcript.name)
print(f"backed up {transcript.name} ({event['trigger']})")
if event["trigger"] == "manual" and "secret" in transcript.read_text(encoding="utf-8"):
    print("this session mentions a secret: not summarizing it", file=sys.stderr)
    sys.exit(2)

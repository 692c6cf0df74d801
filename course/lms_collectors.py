"""`nbgrader zip_collect` plugins for submissions downloaded from an LMS.

Put the LMS's zip (or its files) in ``downloaded/<assignment>/archive/`` and run, from this folder,

    nbgrader zip_collect <assignment> --collector=lms_collectors.CanvasCollector

(or ``MoodleCollector``, ``BlackboardCollector``; ``make course-zip-collect`` does it).
nbgrader unzips into ``downloaded/<assignment>/extracted/`` and copies each notebook to
``submitted/<student>/<assignment>/<notebook>.ipynb``.

What the plugins handle, observed with nbgrader 0.9.6:

* nbgrader matches ``named_regexp`` with ``re.match`` against the *absolute* path of each
  extracted file, so every pattern here starts with ``.*/``.
* Two files for one student and one notebook abort the whole run unless both carry a
  timestamp. The Canvas plugin keeps the newest submission (the highest submission id)
  and skips the others; the Blackboard plugin gives every file its attempt's timestamp, so
  nbgrader keeps the newest attempt.
* Blackboard writes timestamps as ``2026-11-30-14-03-12``, which nbgrader's parser reads
  as another time (2026-12-01 02:00); the Blackboard plugin rewrites them as
  ``2026-11-30 14:03:12`` first.

File names, as each LMS writes them (the student id is the part nbgrader files grades under):

* Canvas: ``<lastfirst>_[LATE_]<user id>_<submission id>_<file>[-<n>].ipynb``; the student id
  is the Canvas user id; Canvas appends ``-1``, ``-2`` to a re-uploaded file's name.
* Moodle: ``<Full Name>_<participant id>_assignsubmission_file_/<file>.ipynb`` (one folder per
  student) or the same without the slash (flat download); the student id is the participant id.
* Blackboard: ``<Assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>_<file>.ipynb``; the
  student id is the username (a username with an underscore is not supported).
"""

from __future__ import annotations

import os
import re

from nbgrader.plugins.zipcollect import FileNameCollectorPlugin
from traitlets import default

CANVAS = (r".*/(?P<name>[^/_]+)_(?P<late>LATE_)?(?P<student_id>\d+)_(?P<submission>\d+)_"
          r"(?P<file_id>[^/]+?)(?:-\d+)?\.ipynb$")
MOODLE = (r".*/(?P<name>[^/_]+)_(?P<student_id>\d+)_assignsubmission_file_/?"
          r"(?P<file_id>[^/]+?)\.ipynb$")
BLACKBOARD = (r".*/[^/]*_(?P<student_id>[^/_]+)_attempt_"
              r"(?P<timestamp>\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d)_(?P<file_id>[^/]+?)\.ipynb$")


class _Collector(FileNameCollectorPlugin):
    """Only the fields nbgrader uses, as strings."""

    def collect(self, submitted_file: str):
        info = super().collect(submitted_file)
        if not info:
            return None
        keep = {k: info[k] for k in ("student_id", "file_id", "timestamp") if info.get(k)}
        return keep


class CanvasCollector(_Collector):
    """Canvas "Download Submissions": keep each student's newest submission of a file."""

    @default("named_regexp")
    def _default_regexp(self):
        return CANVAS

    def collect(self, submitted_file: str):
        info = super().collect(submitted_file)
        if info is None:
            return None
        newest = max(self._rivals(submitted_file, info), key=self._submission_id)
        if newest != submitted_file:
            self.log.warning("Skipping %s: the same student has a newer submission, %s",
                             submitted_file, newest)
            return None
        return info

    def _rivals(self, path: str, info: dict) -> list[str]:
        """Files in the same folder from the same student for the same notebook."""
        folder = os.path.dirname(path)
        out = []
        for name in os.listdir(folder):
            match = re.match(self.named_regexp, os.path.join(folder, name))
            if match and match["student_id"] == info["student_id"] \
                    and match["file_id"] == info["file_id"]:
                out.append(os.path.join(folder, name))
        return out

    def _submission_id(self, path: str) -> int:
        return int(re.match(self.named_regexp, path)["submission"])


class MoodleCollector(_Collector):
    """Moodle "Download all submissions", in folders or flat."""

    @default("named_regexp")
    def _default_regexp(self):
        return MOODLE


class BlackboardCollector(_Collector):
    """Blackboard "Download Assignment": the newest attempt of each student wins."""

    @default("named_regexp")
    def _default_regexp(self):
        return BLACKBOARD

    def collect(self, submitted_file: str):
        info = super().collect(submitted_file)
        if info is None:
            return None
        date, hh, mm, ss = info["timestamp"].rsplit("-", 3)
        info["timestamp"] = f"{date} {hh}:{mm}:{ss}"  # 2026-11-30-14-03-12 -> 2026-11-30 14:03:12
        return info

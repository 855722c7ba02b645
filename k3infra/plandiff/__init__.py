"""``k3infra diff``: what changes between two offline plans (``k3infra plan --format json``), for a PR comment.

Resources are matched by URN. Each one is:

- **added** / **removed**: its URN is only in the head / only in the base plan;
- **replaced**: Pulumi would delete it and create it again. Offline that is decided by rules, not by the
  provider (which is not here): (a) the same type and name under a different parent, or the same name and
  parent with a different type, when the head does not alias the base URN (a changed URN is a new
  resource to Pulumi); (b) a change to a property in :data:`REPLACE_ON`, properties the providers are
  known to replace on. The rules are conservative: a replacement they do not know shows as a change, and
  ``pulumi preview --diff`` (the preview workflow) stays the authority;
- **changed**: same URN, different inputs, provider, protect flag or resource options. Inputs under a path the
  head's ``ignoreChanges`` names are not compared: Pulumi leaves them as they are.

Every change lists its property paths (``spec.template.spec.containers[name=engine].image``) with the old
and new values. Values that are secret stay masked: plans already print ``[secret]``, and any leaf whose key
looks like a credential (:data:`SENSITIVE_KEY`), or anything under a Kubernetes Secret's ``data`` /
``stringData``, is masked here too; a masked value that changed says so without showing either side.
Stack outputs and warnings are compared as well. Above the resources, a change of the replica's layout, parallel mode,
node count, replicas or engine is named as such (``shape``: ``mode: multi-node-nvlink → pipeline-across-nodes``).

The package: ``changes`` (what a diff is made of), ``paths`` (property paths, masking, the replacement rules),
``compare`` (two plans into a diff), ``shape`` (the layout, mode, nodes and engine lines), ``render`` (text and
Markdown).
"""

from .changes import MISSING, Change, Kind, PlanDiff, PlanFormatError, ResourceDiff
from .compare import diff_plans, load
from .paths import REPLACE_ON, replace_paths
from .render import render_markdown, render_text, word_diff
from .shape import shape_changes, shape_lines

__all__ = ["MISSING", "REPLACE_ON", "Change", "Kind", "PlanDiff", "PlanFormatError", "ResourceDiff", "diff_plans",
           "load", "render_markdown", "render_text", "replace_paths", "shape_changes", "shape_lines", "word_diff"]

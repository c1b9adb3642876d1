"""The repository's shape: the engine's packages import each other without circles, only the settings
module reads SSE_* variables, every setting is documented, and nothing names a path of one machine."""
import ast
import re
import subprocess
from pathlib import Path

from conftest import ROOT

ENGINE = ROOT / "engine"


def _module_name(path: Path) -> str:
    name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


def _imports() -> dict[str, set[str]]:
    """Each engine module and the engine modules it imports, at its top or inside a function."""
    modules = {_module_name(p): p for p in ENGINE.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("engine"):
                for alias in node.names:
                    target = f"{node.module}.{alias.name}"
                    graph[name].add(target if target in modules else node.module)
            elif isinstance(node, ast.Import):
                graph[name].update(a.name for a in node.names if a.name in modules)
    for name in graph:
        graph[name] = {t for t in graph[name] if t in modules and t != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_engine_has_no_import_circles():
    graph = _imports()
    assert "engine.search.loop" in graph and "engine.cli.main" in graph["engine.__main__"]
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_only_the_settings_read_sse_variables():
    readers = []
    for path in ENGINE.rglob("*.py"):
        if path.name == "settings.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            # os.environ.get("SSE_..."), os.environ["SSE_..."], os.getenv("SSE_...")
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"SSE_[A-Z0-9_]+", node.value):
                readers.append(f"{path.relative_to(ROOT)}: {node.value}")
    # The server's socket variable is named where a client process is started with it.
    assert readers == ["engine/cli/client.py: SSE_SERVER"], readers


def test_every_setting_is_in_the_architecture_page():
    from engine.settings import describe
    page = (ROOT / "docs" / "architecture.md").read_text()
    table = page.split("<!-- settings:begin -->")[1].split("<!-- settings:end -->")[0]
    missing = [s["name"] for s in describe() if f"`{s['env']}`" not in table or f"`{s['name']}`" not in table]
    assert missing == [], f"docs/architecture.md's settings table lacks {missing}"


def test_no_file_names_a_path_of_one_machine():
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True,
                           check=True).stdout.split()
    # (written so that the pattern does not match itself; TLC's outputs kept verbatim as fixtures name
    # the folders TLC ran in, which is what TLC prints)
    local = re.compile(r"/(?:work|root)/|/home/\w+/|\.\./shared/")
    found = [f for f in files if Path(ROOT / f).is_file()
             and not (f.startswith("tests/fixtures/") and f.endswith(".txt"))
             and local.search(Path(ROOT / f).read_text(errors="replace"))]
    assert found == []

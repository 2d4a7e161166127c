"""``--tool-schema FILE``: the tools a policy was offered, read from the forms the frameworks use, and judged
against the real veRL multi-turn dump's calls (tests/rollout/data/verl-gsm8k-multiturn-hecate, whose prompts
carry Qwen's ``<tools>`` block); every error names the file (and the line)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import orjson
import pytest

from rlvitals.cli import main
from rlvitals.errors import InputError
from rlvitals.rollout import tool_turns as tt
from rlvitals.rollout.options import RolloutOptions
from rlvitals.rollout.readers import read_rollouts
from rlvitals.rollout.tool_schema import read_tool_schemas, tool_schemas_from_text

HECATE = Path(__file__).parent / "data" / "verl-gsm8k-multiturn-hecate"
CALC = {"type": "object", "properties": {"answer": {"type": "string", "description": "The model's answer"}},
        "required": ["answer"]}


@pytest.fixture(scope="module")
def prompt() -> str:
    return str(read_rollouts(HECATE).table["prompt"][0])


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out, err), out.getvalue(), err.getvalue()


def test_the_forms_the_frameworks_use(prompt: str, tmp_path: Path) -> None:
    from_prompt = tool_schemas_from_text(prompt, "prompt")  # the chat template's <tools> block, in the prompt
    assert list(from_prompt) == ["calc_gsm8k_reward"] and from_prompt["calc_gsm8k_reward"]["required"] == ["answer"]
    block = re.search(r"<tools>\n(.*?)\n</tools>", prompt, re.DOTALL)
    assert block
    [line] = block[1].splitlines()
    openai = [json.loads(line)]
    for text in (json.dumps(openai), json.dumps({"tools": openai}), line + "\n" + line.replace("calc_gsm8k_reward",
                 "other") + "\n", json.dumps([openai[0]["function"]]), json.dumps({"calc_gsm8k_reward": CALC})):
        got = tool_schemas_from_text(text, "tools.json")
        assert got["calc_gsm8k_reward"]["required"] == ["answer"], text
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(openai), encoding="utf-8")
    assert read_tool_schemas(path) == from_prompt


def test_a_file_that_holds_no_tool_is_named(tmp_path: Path) -> None:
    cases = {"missing.json": None, "empty.json": "[]", "broken.json": '[\n{"type": "function",\n  "function": {',
             "noname.json": '[{"type": "function", "function": {"parameters": {}}}]', "lines.jsonl": '{"a": 1}\n{b\n'}
    said = {}
    for name, text in cases.items():
        if text is not None:
            (tmp_path / name).write_text(text, encoding="utf-8")
        with pytest.raises(InputError) as got:
            read_tool_schemas(tmp_path / name)
        said[name] = (str(got.value), got.value.text("zh"))
    assert said["missing.json"][0] == f"{tmp_path / 'missing.json'}: cannot read the tool schema (No such file or " \
                                      "directory)"
    assert said["empty.json"][0].startswith(f"{tmp_path / 'empty.json'}: holds no tool: expected a list of tools")
    assert said["empty.json"][1].startswith(f"{tmp_path / 'empty.json'}：里面没有工具")
    assert said["broken.json"][0].startswith(f"{tmp_path / 'broken.json'}: line 3: not JSON, nor a <tools> block (")
    assert said["noname.json"][0] == (f"{tmp_path / 'noname.json'}: tool 1: not a tool (a name and the JSON schema "
                                      'of its parameters): {"type": "function", "function": {"parameters": {}}}')
    assert said["lines.jsonl"][0].startswith(f"{tmp_path / 'lines.jsonl'}: line 2: not JSON (")


def test_the_options_keep_the_schemas_frozen() -> None:
    a = RolloutOptions(tool_schemas={"calc": CALC})
    assert a == RolloutOptions(tool_schemas=a.tool_schemas) and a.schema_map() == {"calc": CALC}
    assert RolloutOptions().schema_map() is None and hash(a) != hash(RolloutOptions())
    with pytest.raises(ValueError, match="tool_schemas must map each tool's name to a JSON schema"):
        RolloutOptions(tool_schemas={"calc": "not a schema"})  # type: ignore[dict-item]


def test_the_real_calls_judged_against_the_real_schema(prompt: str, tmp_path: Path) -> None:
    (tmp_path / "prompt.txt").write_text(prompt, encoding="utf-8")
    code, out, err = _cli("rollouts", str(HECATE), "--json")
    plain = orjson.loads(out)["steps"][0]["metrics"]["rollout/tool_calls/valid_args"]
    code, out, err = _cli("rollouts", str(HECATE), "--tool-schema", str(tmp_path / "prompt.txt"), "--json")
    assert code == 0, err
    fitted = orjson.loads(out)["steps"][0]["metrics"]["rollout/tool_calls/valid_args"]
    schemas = tool_schemas_from_text(prompt, "prompt")
    expected = tt.tool_turns_table(read_rollouts(HECATE).table, schemas=schemas)["rollout/tool_calls/valid_args"][0]
    # 1,729 of 1,750 calls parse; fewer also fit the schema (an integer answer where it asks for a string)
    assert plain == pytest.approx(1729 / 1750) and fitted == pytest.approx(expected) and fitted < plain
    # the tools list as the run gave it to the chat template (tests/rollout/data/tools-gsm8k.json), in the table
    code, out, err = _cli("rollouts", str(HECATE), "--tool-schema", str(HECATE.with_name("tools-gsm8k.json")))
    lines = out.splitlines()
    header = lines[lines.index("rollout scale") + 1].split()
    assert code == 0 and header[-4:] == ["tools", "repeat", "valid", "reads"], header
    assert lines[lines.index("rollout scale") + 2].split()[-2:] == [f"{fitted:.3g}", "0.42"]


def test_the_flags_errors(tmp_path: Path) -> None:
    code, _, err = _cli("rollouts", str(HECATE), "--tool-schema", str(tmp_path / "none.json"))
    assert code == 2 and f"{tmp_path / 'none.json'}: cannot read the tool schema" in err
    code, _, err = _cli("diagnose", str(HECATE), "--tool-schema", "tools.json")
    assert code == 2 and "--tool-schema: this option says how rollouts are read and analysed, but no --rollouts" in err

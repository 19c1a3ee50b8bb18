"""One conversation judged by the documented rules: its first code, and the message it is at.

Each rule is written out once, as the list of the places where a conversation breaks
it (message indices, or None for the conversation as a whole), in `ORDER`: the
global order of the codes (`chatgate.rules.ALL_REASONS`, as the codes' table of the
README and of the codes' docs lists them). A conversation's code is the first rule
that has a place; the message `locate` gives is that rule's first place.

The places, as the docs of `locate` put them: a rule of single messages is at each
message it refuses; `system_position` at each system message but the first;
`developer_position` at each developer message after the lead; `first_role` at the
first turn (None without a turn); `last_role` and `prompt_end` at the last message;
`not_alternating` at the second turn of each pair; `orphan_tool` at each tool message
that answers nothing; `unanswered_call` at each assistant message whose calls aren't all
answered (`peers`); the rules of the whole value (`no_messages`,
`too_few_messages`, `missing_turn`, `missing_role`, `too_many_images`,
`image_count`, `bad_tools`) at None.

A part of a dataset row is judged as a prompt (`part="prompt"`: it ends with a user
turn, or a tool turn with tools=True; its last role isn't checked), a completion
(`part="completion"`: assistant turns, and tool turns with tools=True; neither first
nor last role checked, and its tool messages may answer calls of the prompt) or a
whole conversation. The rules that count or look for roles in a whole conversation
(`too_few_messages`, `missing_role`, `missing_turn`) are the whole conversation's, and so
are a completion's images and tool answers (`too_many_images`, `orphan_tool`: the whole
conversation of the prompt and the completion counts them).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping

from . import parts, peers, tokens, tools
from .options import resolve
from .values import (
    ABSENT,
    BAD,
    NOT_JSON,
    SURELY_READ,
    SURELY_REFUSED,
    given,
    is_blank,
    is_list,
    is_missing,
    is_text,
    nesting_depth,
    read_json,
)

ORDER = (
    "too_large", "not_messages", "mixed_format", "not_text", "not_label", "bad_input",
    "output_count", "no_messages", "too_few_messages", "empty_text", "bad_message", "unknown_key",
    "bad_content_type", "bad_image_url", "image_too_large", "bad_weight", "bad_tool_call",
    "bad_function_call", "mistral_tool_call", "bad_thinking", "bad_tools", "tool_turn", "unknown_role", "image_role",
    "system_position", "developer_position", "missing_turn", "missing_role", "first_role",
    "prompt_end", "completion_role", "orphan_tool", "unanswered_call", "not_alternating", "last_role",
    "unknown_tool", "content_or_calls", "empty_content", "placeholder_content", "too_many_images", "image_count", "audio_count", "video_count", "too_long", "same_pair", "implicit_prompt",
)
"""Every code, in the order they are checked (the README: "a row's code is the first that applies")."""

WHOLE, PROMPT, COMPLETION, OUTPUT = "whole", "prompt", "completion", "output"
"""The parts of a row a list of messages may be; an OpenAI preference output (`OUTPUT`) is a
completion of the assistant's one message, a tool's not allowed even with tools=True."""


class Conversation:
    """What the rules read of a list of messages: each message's role (aliases renamed; None
    for a message that isn't a mapping with a string role), content and calls, and the lead."""

    def __init__(self, messages, o, part=WHOLE, declared=None, images=None, state=None, media=None):
        self.messages, self.o, self.part = list(messages), o, part
        self.declared, self.images, self.state = declared, images, state
        self.media = media if media is not None else (None, None)
        self.n = len(self.messages)
        self.roles = [self._role(m) for m in self.messages]
        self.contents = [m.get(o.content_key, ABSENT) if isinstance(m, Mapping) else ABSENT for m in self.messages]
        self.calls = [self._calls(m) for m in self.messages] if o.tools or o.mistral else [None] * self.n
        lead = 1 if self.n and self.roles[0] == "system" else 0
        if o.harmony and lead < self.n and self.roles[lead] == "developer":
            lead += 1
        self.lead = lead
        self.turns = range(lead, self.n)

    def _role(self, message):
        if not isinstance(message, Mapping) or not isinstance(message.get(self.o.role_key), str):
            return None
        role = message[self.o.role_key]
        return self.o.aliases.get(role, role)

    def _calls(self, message):
        if not isinstance(message, Mapping):
            return None
        if self.o.sharegpt and message.get(self.o.role_key) == "function_call":
            return tools.sharegpt_calls(message.get(self.o.content_key))
        return tools.tool_calls(message)

    def each(self, refused):
        """The messages (with a role) that `refused(i)` refuses."""
        return [i for i in range(self.n) if self.roles[i] is not None and refused(i)]


def _whole(applies):
    return [None] if applies else []


# --- The rules, in ORDER ------------------------------------------------------------------------


def no_messages(c):
    return _whole(c.n == 0)


def too_few_messages(c):
    return _whole(c.part == WHOLE and c.o.min_messages is not None and c.n < c.o.min_messages)


def bad_message(c):
    return [i for i in range(c.n) if c.roles[i] is None]


def unknown_key(c):
    if c.o.allowed_keys is None:
        return []
    allowed = set(c.o.allowed_keys) | {c.o.role_key, c.o.content_key}
    return c.each(lambda i: any(k not in allowed and given(c.messages[i], k) is not ABSENT for k in c.messages[i]))


def bad_content_type(c):
    if not parts.checks_kinds(c.o):
        return []
    return c.each(lambda i: not parts.content_allowed(c.contents[i], c.o))


def bad_image_url(c):
    if not c.o.image_data_urls:
        return []
    return c.each(lambda i: not all(parts.is_image_data_url(u) for u in parts.image_urls(c.contents[i])))


def image_too_large(c):
    limit = c.o.max_image_bytes
    if limit is None:
        return []

    def too_large(i):
        sizes = [parts.data_url_size(url) for url in parts.image_urls(c.contents[i])]
        return any(size is not None and size > limit for size in sizes)

    return c.each(too_large)


def bad_weight(c):
    if c.o.weight_key is None:
        return []

    def bad(i):
        weight = given(c.messages[i], c.o.weight_key)
        is_integer = isinstance(weight, numbers.Integral) and not isinstance(weight, bool)
        return weight is not ABSENT and not (is_integer and weight in (0, 1))

    return c.each(bad)


def bad_tool_call(c):
    if not c.o.tools:
        return []
    return c.each(lambda i: c.calls[i] is BAD or (c.calls[i] is not None and c.roles[i] != "assistant"))


def function_call_of(message):
    """A message's legacy `function_call`: "none" (absent or null), "named" (a mapping with a
    non-empty string name) or "malformed"."""
    call = given(message, "function_call")
    if call is ABSENT:
        return "none"
    if isinstance(call, Mapping) and isinstance(call.get("name"), str) and call["name"] != "":
        return "named"
    return "malformed"


def bad_function_call(c):
    if not c.o.legacy_functions:
        return []

    def bad(i):
        call = function_call_of(c.messages[i])
        return call == "malformed" or (call == "named" and c.roles[i] != "assistant")

    return c.each(bad)


def bad_thinking(c):
    key = c.o.thinking
    if key is None:
        return []

    def bad(i):
        value = given(c.messages[i], key)
        return value is not ABSENT and (c.roles[i] != "assistant" or not isinstance(value, str))

    return c.each(bad)


def bad_tools(c):
    return _whole(c.declared is BAD)


TOOL_TURNS = ("tool", "function")
TOOLISH_TAGS = ("observation", "function_call", "ipython")
"""Tags of tool turns in other conventions (ShareGPT's, Llama's): the sample profile's "tool and
function turns" may or may not name them (then they are roles that aren't allowed)."""


def tool_turn(c):
    if not c.o.sample:
        return []

    def calls(i):
        value = given(c.messages[i], "tool_calls")
        return value is not ABSENT and not (is_list(value) and len(value) == 0)

    turns = c.o.tool_turns
    return c.each(lambda i: c.roles[i] in turns or (c.roles[i] == "assistant" and calls(i)))


def unknown_role(c):
    return c.each(lambda i: c.roles[i] not in c.o.roles)


def image_role(c):
    if c.o.image_roles is None:
        return []
    return c.each(lambda i: c.roles[i] not in c.o.image_roles and parts.count_images(c.contents[i]) > 0)


def system_position(c):
    if "system" not in c.o.roles:
        return []
    return c.each(lambda i: c.roles[i] == "system" and i > 0)


def developer_position(c):
    if not c.o.harmony:
        return []
    lead_developer = c.lead - 1 if c.lead and c.roles[c.lead - 1] == "developer" else None
    return c.each(lambda i: c.roles[i] == "developer" and i != lead_developer)


def missing_turn(c):
    turns = [c.roles[i] for i in c.turns]
    return _whole(c.o.sample and c.part == WHOLE and ("user" not in turns or "assistant" not in turns))


def missing_role(c):
    if c.part != WHOLE:
        return []
    return _whole(any(role not in c.roles for role in c.o.require_roles))


def first_role(c):
    if c.o.first_role is None or c.part in (COMPLETION, OUTPUT):
        return []
    if not c.turns:
        return [None]
    return [c.lead] if c.roles[c.lead] != c.o.first_role else []


def ends_a_prompt(role, o):
    return role == "user" or (o.tools and role == "tool")


def answers_role(role, o, part=COMPLETION):
    return role == "assistant" or (o.tools and role == "tool" and part == COMPLETION)


def prompt_end(c):
    return [c.n - 1] if c.part == PROMPT and not ends_a_prompt(c.roles[-1], c.o) else []


def completion_role(c):
    if c.part not in (COMPLETION, OUTPUT):
        return []
    return c.each(lambda i: not answers_role(c.roles[i], c.o, c.part))


def orphan_tool(c):
    if not c.o.tools or (c.part in (COMPLETION, OUTPUT) and c.state is None):
        return []
    return tools.orphan_sites(c.roles, c.calls, c.messages, c.state)


def not_alternating(c):
    return tools.repeated_turns(c.roles, c.turns, c.o.tools) if c.o.alternate else []


def last_role(c):
    if c.o.last_role is None or c.part != WHOLE:
        return []
    return [c.n - 1] if c.roles[-1] != c.o.last_role else []


def unknown_tool(c):
    if not c.o.tools or c.declared is None or c.declared is BAD:
        return []
    return c.each(lambda i: c.calls[i] not in (None, BAD) and any(n not in c.declared for _, n in c.calls[i]))


def empty_content(c):
    if c.o.allow_empty:
        return []

    def exempt(i):
        if c.o.legacy_functions and function_call_of(c.messages[i]) == "named":
            return True  # the call is the message's content
        return c.o.tools and c.roles[i] == "assistant" and c.calls[i] not in (None, BAD)

    return c.each(lambda i: not exempt(i) and is_blank(c.contents[i], c.o.text_key))


def too_many_images(c):
    if c.o.max_images is None or c.part in (COMPLETION, OUTPUT):
        return []
    return _whole(sum(parts.count_images(content) for content in c.contents) > c.o.max_images)


def image_count(c):
    if c.images is None:
        return []
    found = sum(parts.images_referenced(content, c.o) for content in c.contents)
    return _whole(c.images is BAD or found != c.images)


RULES = {
    "no_messages": no_messages,
    "too_few_messages": too_few_messages,
    "bad_message": bad_message,
    "unknown_key": unknown_key,
    "bad_content_type": bad_content_type,
    "bad_image_url": bad_image_url,
    "image_too_large": image_too_large,
    "bad_weight": bad_weight,
    "bad_tool_call": bad_tool_call,
    "bad_function_call": bad_function_call,
    "mistral_tool_call": peers.mistral_tool_call,
    "bad_thinking": bad_thinking,
    "bad_tools": bad_tools,
    "tool_turn": tool_turn,
    "unknown_role": unknown_role,
    "image_role": image_role,
    "system_position": system_position,
    "developer_position": developer_position,
    "missing_turn": missing_turn,
    "missing_role": missing_role,
    "first_role": first_role,
    "prompt_end": prompt_end,
    "completion_role": completion_role,
    "orphan_tool": orphan_tool,
    "unanswered_call": peers.unanswered_call,
    "not_alternating": not_alternating,
    "last_role": last_role,
    "unknown_tool": unknown_tool,
    "content_or_calls": peers.content_or_calls,
    "empty_content": empty_content,
    "placeholder_content": peers.placeholder_content,
    "too_many_images": too_many_images,
    "image_count": image_count,
    "audio_count": peers.audio_count,
    "video_count": peers.video_count,
    "too_long": tokens.too_long,
}
assert list(RULES) == [code for code in ORDER if code in RULES]


def judge_all(messages, o, part=WHOLE, declared=None, images=None, state=None, media=None):
    """The first code of a list of messages under resolved options `o`, with every place it
    applies at, or None.

    `declared`: the row's declared function names (None: no tools column; BAD: malformed);
    `images`: the number of the row's images (None: no images column; BAD: malformed);
    `state`: the tool run a completion continues (None: judge no tool answers there);
    `media`: the row's (audios, videos), each like `images`, or None."""
    c = Conversation(messages, o, part, declared, images, state, media)
    for code, rule in RULES.items():
        if code == "no_messages" or c.n:
            sites = rule(c)
            if sites:
                return code, sites
    return None


def judge(messages, o, part=WHOLE, declared=None, images=None, state=None, media=None):
    """The first (code, place) of a list of messages (see `judge_all`), or None."""
    found = judge_all(messages, o, part, declared, images, state, media)
    return None if found is None else (found[0], found[1][0])


# --- A value of a conversation column -------------------------------------------------------------


def messages_of(value, o, single=False):
    """The list of messages a decoded value holds, or None: a list; a mapping's "messages" (with
    sharegpt=True also its "conversations", or the mapping itself when it holds the role key);
    with `single`, a mapping holding the role key and no "messages" is one message too."""
    if isinstance(value, Mapping):
        if "messages" in value:
            value = value["messages"]
        elif o.sharegpt and "conversations" in value:
            value = value["conversations"]
        elif (o.sharegpt or single) and o.role_key in value:
            value = [value]
        else:
            return None
    return list(value) if is_list(value) else None


def too_large(value, o):
    """A JSON text longer (in UTF-8 bytes) than `max_value_bytes=` isn't read."""
    if o.max_value_bytes is None or not is_text(value):
        return False
    size = len(value.encode("utf-8", "surrogatepass")) if isinstance(value, str) else len(bytes(value))
    return size > o.max_value_bytes


def read_value(value, o):
    """(answers so far, decoded value or NOT_JSON): a missing, too large or unreadable value
    gets its code here; JSON nested between SURELY_READ and SURELY_REFUSED levels may be refused."""
    if is_missing(value):
        return {None if o.na_pass else ("not_messages", None)}, NOT_JSON
    if too_large(value, o):
        return {("too_large", None)}, NOT_JSON
    if not is_text(value):
        return set(), value
    depth = nesting_depth(value)
    decoded = NOT_JSON if depth > SURELY_REFUSED else read_json(value)
    if decoded is NOT_JSON:
        return {("not_messages", None)}, NOT_JSON
    return ({("not_messages", None)} if depth > SURELY_READ else set()), decoded


def plain_answers(value, declared=None, images=None, media=None, **options):
    """The set of right answers for one value of a conversation column: (code, message index or
    None) pairs, None for a passing value; more than one only where the rules allow both."""
    o = resolve(options)
    answers, decoded = read_value(value, o)
    if decoded is NOT_JSON:
        return answers
    messages = messages_of(decoded, o)
    if messages is None:
        answers.add(("not_messages", None))
        return answers
    answers.add(judge(messages, o, WHOLE, declared, images, media=media))
    if o.sample:  # the tags of tool turns in other conventions read as tool turns too
        o.tool_turns = TOOL_TURNS + TOOLISH_TAGS
        answers.add(judge(messages, o, WHOLE, declared, images, media=media))
    return answers

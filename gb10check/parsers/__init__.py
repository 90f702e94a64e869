"""Pure parsers: tool output text in, frozen dataclasses out, ParseError on anything unexpected.

No I/O here. Parsers do not rely on line order or exact spacing where the tools do not
guarantee them.
"""

#!/usr/bin/env python3
"""Fails (exit 1) when a function definition in the given C++ files is longer than LIMIT lines.

A definition is a line at namespace or class level that opens a parameter list and reaches `{`
before `;`; its length runs to the matching closing brace. Good enough for this code base's
style (clang-formatted, one definition per line start); it is a guard, not a parser.
"""
import re
import sys

LIMIT = int(sys.argv[1])
START = re.compile(r'^(\s{0,2})[A-Za-z_][\w:<>,&\* ]*[\w>&\*]\s+[\w:~]+\(')
NOT_A_FUNCTION = re.compile(r'^\s*(namespace|using|struct|class|enum|return|if|for|while|switch|case|else|template)\b')

failed = False
for path in sys.argv[2:]:
    lines = open(path, encoding='utf-8').read().split('\n')
    i = 0
    while i < len(lines):
        line = lines[i]
        if START.match(line) and not NOT_A_FUNCTION.match(line):
            j, opens = i, False
            while j < len(lines) and j < i + 15:
                brace, semi = lines[j].find('{'), lines[j].find(';')
                if brace >= 0 and (semi < 0 or brace < semi):
                    opens = True
                    break
                if semi >= 0:
                    break
                j += 1
            if opens:
                depth, k = 0, j
                while k < len(lines):
                    depth += lines[k].count('{') - lines[k].count('}')
                    if depth <= 0:
                        break
                    k += 1
                if k - i + 1 > LIMIT:
                    print(f'{path}:{i + 1}: {k - i + 1} lines (limit {LIMIT}): {line.strip()[:80]}')
                    failed = True
                i = k + 1
                continue
        i += 1
print('function lengths: over the limit' if failed else f'function lengths: all within {LIMIT} lines')
sys.exit(1 if failed else 0)

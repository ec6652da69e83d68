# SPDX-License-Identifier: MIT
# A small Python example for the README: which function opened the file and
# started the child process.
import json, subprocess

def load(path):
    with open(path) as f:
        return f.read().split()

def summarize(words):
    return json.dumps({"words": len(words)})

def main():
    words = load("/etc/hostname")
    print(summarize(words))
    subprocess.run(["/bin/true"])

main()

import os
import sys

# Lets test modules import the shared brute-force oracle (tests/oracle.py) as `oracle`.
sys.path.insert(0, os.path.dirname(__file__))

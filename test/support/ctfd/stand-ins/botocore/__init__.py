"""Test scaffolding beside the boto3 stand-in."""

"""What a contributor does to register a key through the API: ask for a challenge, sign it with
the private half, post the public half with the signature."""
import base64

from evaluator.verification_records import public_key_text


def register_key(client, key, owner_name: str | None = None, *, sign_with=None):
    """The response of POST /api/verifier-keys/ for `key` (the challenge signed by `sign_with`,
    default `key` itself)."""
    challenge = client.get("/api/verifier-keys/challenge/").json()["challenge"]
    signature = base64.b64encode((sign_with or key).sign(challenge.encode("utf-8"))).decode("ascii")
    data = {"public_key": public_key_text(key.public_key()), "challenge": challenge, "signature": signature}
    if owner_name is not None:
        data["owner_name"] = owner_name
    return client.post("/api/verifier-keys/", data)

import base64
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evaluator.verification_records import (
    key_id_of, load_private_key, new_private_key, private_key_pem, public_key_text,
)


class Command(BaseCommand):
    help = ("Ed25519 keys of a verifier. `new PATH` writes a private key (mode 600) and prints its public "
            "half; `show PATH` prints the public half and key id of an existing key; `prove PATH CHALLENGE` "
            "prints the key's signature of a site's registration challenge.")

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["new", "show", "prove"])
        parser.add_argument("path", type=Path)
        parser.add_argument("challenge", nargs="?", default="", help="prove: the challenge the site issued")

    def handle(self, *args, action, path, challenge, **options):
        if action == "prove":
            if not challenge:
                raise CommandError("prove needs the challenge the site showed (GET /api/verifier-keys/challenge/)")
            try:
                key = load_private_key(path)
            except ValueError as exc:
                raise CommandError(str(exc)) from None
            self.stdout.write(base64.b64encode(key.sign(challenge.strip().encode("utf-8"))).decode("ascii"))
            return
        if action == "new":
            if path.exists():
                raise CommandError(f"{path} exists; not overwriting a key")
            key = new_private_key()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch(mode=0o600)
            path.write_bytes(private_key_pem(key))
        else:
            try:
                key = load_private_key(path)
            except ValueError as exc:
                raise CommandError(str(exc)) from None
        public = key.public_key()
        self.stdout.write(f"key_id:     {key_id_of(public)}")
        self.stdout.write(f"public_key: {public_key_text(public)}")

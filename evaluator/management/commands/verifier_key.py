from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evaluator.verification_records import (
    key_id_of, load_private_key, new_private_key, private_key_pem, public_key_text,
)


class Command(BaseCommand):
    help = ("Ed25519 keys of a verifier. `new PATH` writes a private key (mode 600) and prints its public "
            "half; `show PATH` prints the public half and key id of an existing key.")

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["new", "show"])
        parser.add_argument("path", type=Path)

    def handle(self, *args, action, path, **options):
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

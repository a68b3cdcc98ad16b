"""A real password hasher (Django's MD5, fast) that counts how many passwords it hashed, so a
test can tell that two code paths did the same hashing work without timing them."""
from django.contrib.auth.hashers import MD5PasswordHasher


class CountingHasher(MD5PasswordHasher):
    algorithm = "counting_md5"
    encoded = 0

    def encode(self, password, salt):
        CountingHasher.encoded += 1
        return super().encode(password, salt)
